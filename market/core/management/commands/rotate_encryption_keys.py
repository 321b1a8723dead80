"""Re-encrypt everything sealed at rest under the current key (the first of GRADUAL_ENCRYPTION_KEYS).

Rotation: put the new key first in GRADUAL_ENCRYPTION_KEYS (keep the old one after it),
restart, run this command, then remove the old key. Every kind of sealed thing has a
rotator (``market.core.crypto.register_rotator``), found in the apps' ``services``
modules; each re-seals under row locks and is idempotent, so the command can be run
again at any time (a second run re-seals nothing). It fails if anything did not open.
"""

from django.core.management.base import BaseCommand, CommandError
from django.utils.module_loading import autodiscover_modules

from market.core import crypto


class Command(BaseCommand):
    help = "Re-encrypt data files, true answers and stored noise under the current encryption key."

    def add_arguments(self, parser):
        parser.add_argument(
            "--new-key", metavar="ID",
            help="only print a fresh entry 'ID:base64' to put first in GRADUAL_ENCRYPTION_KEYS, and stop",
        )

    def handle(self, *args, **options):
        if options.get("new_key"):
            try:
                self.stdout.write(crypto.new_key_entry(options["new_key"]))
            except crypto.KeyConfigError as exc:
                raise CommandError(str(exc)) from None
            return
        autodiscover_modules("services")  # where the apps register their rotators
        ring = crypto.keyring()
        self.stdout.write(f"current key: {ring.current_id}; keys that open: {', '.join(ring.ids)}")
        damaged = 0
        for name, rotate in sorted(crypto.rotators().items()):
            done = rotate()
            damaged += done.damaged
            line = f"{name}: {done.resealed} re-encrypted, {done.unchanged} already under '{ring.current_id}'"
            if done.damaged:
                line += f", {done.damaged} DAMAGED (do not open with any configured key; left as they are)"
            self.stdout.write(line)
        if damaged:
            raise CommandError(f"{damaged} stored values did not open; keep the old keys until they are dealt with")
        self.stdout.write(self.style.SUCCESS(f"everything is under '{ring.current_id}'"))
