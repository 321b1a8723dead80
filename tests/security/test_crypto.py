"""Encryption at rest (market/core/crypto.py): the primitives, without the database.

Round trips of values and streams; any changed byte, a wrong context, a cut or
reordered stream and an unknown key all fail with CryptoError; keys parse from
the environment's format, the first seals and all open; a 50 MB stream is
sealed and opened with a few MB of Python memory.
"""

from __future__ import annotations

import base64
import io
import os
import tracemalloc

import pytest
from django.core import checks

from market.core import crypto
from market.core.crypto import CryptoError, KeyConfigError, Keyring


def key(byte: int) -> bytes:
    return bytes([byte]) * 32


def entry(key_id: str, byte: int) -> str:
    return f"{key_id}:{base64.b64encode(key(byte)).decode()}"


OLD = Keyring((("old", key(1)),))
NEW = Keyring((("new", key(2)), ("old", key(1))))
NEW_ONLY = Keyring((("new", key(2)),))
CTX = b"listing-answer:42"


def sealed_stream(ring, data: bytes, *, context=CTX, chunk_size=1000) -> bytes:
    out = io.BytesIO()
    n = ring.seal_stream(io.BytesIO(data), out, context=context, chunk_size=chunk_size)
    assert n == len(out.getvalue())
    return out.getvalue()


def opened_stream(ring, blob: bytes, *, context=CTX) -> bytes:
    out = io.BytesIO()
    n = ring.unseal_stream(io.BytesIO(blob), out, context=context)
    assert n == len(out.getvalue())
    return out.getvalue()


# --- small values


# ids, so that parallel processes (pytest-xdist) collect the same tests: the random values differ in each
@pytest.mark.parametrize("data", [b"", b"x", os.urandom(8 * 7), os.urandom(5000)], ids=["empty", "one-byte", "56-random", "5000-random"])
def test_a_value_round_trips_and_is_not_in_the_clear(data):
    blob = OLD.seal(data, context=CTX)
    assert OLD.unseal(blob, context=CTX) == data
    assert crypto.key_id_of(blob) == "old"
    if len(data) >= 8:
        assert data not in blob


def test_two_seals_of_the_same_value_differ():
    """Random nonces: equal answers do not give equal ciphertexts."""
    assert OLD.seal(b"same", context=CTX) != OLD.seal(b"same", context=CTX)


def test_any_changed_byte_of_a_value_fails():
    blob = OLD.seal(b"the true answer, 8 bytes per float", context=CTX)
    for i in range(len(blob)):
        for flip in (0x01, 0x80):
            damaged = bytearray(blob)
            damaged[i] ^= flip
            with pytest.raises(CryptoError):
                OLD.unseal(bytes(damaged), context=CTX)


def test_a_cut_value_fails():
    blob = OLD.seal(b"0123456789", context=CTX)
    for n in range(len(blob)):
        with pytest.raises(CryptoError):
            OLD.unseal(blob[:n], context=CTX)
    with pytest.raises(CryptoError):
        OLD.unseal(blob + b"\0", context=CTX)


def test_a_value_moved_to_another_row_fails():
    blob = OLD.seal(b"answer of 42", context=b"listing-answer:42")
    with pytest.raises(CryptoError, match="wrong context"):
        OLD.unseal(blob, context=b"listing-answer:43")


def test_the_wrong_key_with_the_same_id_fails():
    blob = OLD.seal(b"secret", context=CTX)
    impostor = Keyring((("old", key(9)),))
    with pytest.raises(CryptoError, match="wrong key"):
        impostor.unseal(blob, context=CTX)


def test_an_unknown_key_id_fails_clearly():
    blob = NEW.seal(b"secret", context=CTX)
    with pytest.raises(CryptoError, match="key 'new', which is not in GRADUAL_ENCRYPTION_KEYS"):
        OLD.unseal(blob, context=CTX)


def test_plain_bytes_are_refused():
    with pytest.raises(CryptoError, match="bad magic"):
        OLD.unseal(b"\0" * 40, context=CTX)
    with pytest.raises(CryptoError):
        crypto.key_id_of(b"\0" * 40)


def test_rotation_the_old_key_still_opens_and_the_new_one_seals():
    old_blob = OLD.seal(b"v", context=CTX)
    assert NEW.unseal(old_blob, context=CTX) == b"v"
    resealed = NEW.seal(NEW.unseal(old_blob, context=CTX), context=CTX)
    assert crypto.key_id_of(resealed) == "new"
    # once everything is resealed the old key can go
    assert NEW_ONLY.unseal(resealed, context=CTX) == b"v"
    with pytest.raises(CryptoError, match="'old'"):
        NEW_ONLY.unseal(old_blob, context=CTX)


# --- streams


@pytest.mark.parametrize("size", [0, 1, 999, 1000, 1001, 2000, 4567])
def test_a_stream_round_trips(size):
    data = os.urandom(size)
    blob = sealed_stream(OLD, data)
    assert opened_stream(OLD, blob) == data
    assert crypto.key_id_of(blob) == "old"
    assert crypto.key_id_of(blob[:20]) == "old"  # the header suffices


def test_a_stream_through_real_files(tmp_path):
    """Raw files may read short; the format does not depend on how reads are cut."""
    data = os.urandom(300_000)
    (tmp_path / "plain").write_bytes(data)
    with open(tmp_path / "plain", "rb", buffering=0) as src, open(tmp_path / "sealed", "wb") as dst:
        OLD.seal_stream(src, dst, context=CTX, chunk_size=65536)
    with open(tmp_path / "sealed", "rb", buffering=0) as src, open(tmp_path / "back", "wb") as dst:
        OLD.unseal_stream(src, dst, context=CTX)
    assert (tmp_path / "back").read_bytes() == data
    assert data[:64] not in (tmp_path / "sealed").read_bytes()


def test_any_changed_byte_of_a_stream_fails():
    blob = sealed_stream(OLD, os.urandom(250), chunk_size=100)
    for i in range(len(blob)):
        damaged = bytearray(blob)
        damaged[i] ^= 0x04
        with pytest.raises(CryptoError):
            opened_stream(OLD, bytes(damaged))


def test_a_truncated_stream_fails_at_every_length():
    """Cut at a chunk boundary (the final chunk missing) or inside a chunk."""
    data = os.urandom(300)  # three full chunks of 100 and an empty final one
    blob = sealed_stream(OLD, data, chunk_size=100)
    for n in range(len(blob)):
        with pytest.raises(CryptoError):
            opened_stream(OLD, blob[:n])
    with pytest.raises(CryptoError):  # bytes appended change where the final chunk ends
        opened_stream(OLD, blob + b"junk")


def test_reordered_dropped_or_repeated_chunks_fail():
    chunk = 100 + crypto.TAG_BYTES
    blob = sealed_stream(OLD, os.urandom(350), chunk_size=100)
    header_len = len(blob) - (3 * chunk + 50 + crypto.TAG_BYTES)
    header, body = blob[:header_len], blob[header_len:]
    c = [body[i * chunk : (i + 1) * chunk] for i in range(3)] + [body[3 * chunk :]]
    assert opened_stream(OLD, header + b"".join(c)) != b""  # the pieces are cut right
    for order in ([1, 0, 2, 3], [0, 2, 1, 3], [0, 1, 3], [0, 1, 2, 2, 3], [0, 0, 1, 2, 3], [0, 1, 2]):
        with pytest.raises(CryptoError):
            opened_stream(OLD, header + b"".join(c[i] for i in order))


def test_chunks_spliced_from_another_stream_fail():
    """Each stream has its own random nonce prefix, bound in every chunk."""
    a = sealed_stream(OLD, os.urandom(250), chunk_size=100)
    b = sealed_stream(OLD, os.urandom(250), chunk_size=100)
    header_len = len(a) - (2 * 116 + 50 + 16)
    with pytest.raises(CryptoError):
        opened_stream(OLD, a[:header_len] + b[header_len:])
    with pytest.raises(CryptoError):
        opened_stream(OLD, a[: header_len + 116] + b[header_len + 116 :])


def test_a_stream_with_the_wrong_context_or_key_fails():
    blob = sealed_stream(OLD, b"data file bytes")
    with pytest.raises(CryptoError, match="wrong context"):
        opened_stream(OLD, blob, context=b"dataset-file:2")
    with pytest.raises(CryptoError, match="'old'"):
        opened_stream(NEW_ONLY, blob)
    assert opened_stream(NEW, blob) == b"data file bytes"


def test_a_value_does_not_open_as_a_stream_nor_the_reverse():
    with pytest.raises(CryptoError):
        opened_stream(OLD, OLD.seal(b"x" * 50, context=CTX))
    with pytest.raises(CryptoError):
        OLD.unseal(sealed_stream(OLD, b"x" * 50), context=CTX)


class Zeros(io.RawIOBase):
    """``size`` bytes of a pattern, produced on demand (the source never sits in memory)."""

    def __init__(self, size):
        self.left = size

    def readable(self):
        return True

    def readinto(self, buffer):
        n = min(len(buffer), self.left)
        buffer[:n] = b"\x5a" * n
        self.left -= n
        return n


class Sink(io.RawIOBase):
    """Counts what is written and keeps the first bytes (the output never sits in memory)."""

    def __init__(self, keep=0):
        self.size, self.keep, self.kept = 0, keep, bytearray()

    def writable(self):
        return True

    def write(self, data):
        if len(self.kept) < self.keep:
            self.kept += bytes(data[: self.keep - len(self.kept)])
        self.size += len(data)
        return len(data)


def test_a_50_mb_stream_needs_a_few_mb_of_memory(tmp_path, report):
    size = 50 << 20
    sealed_path = tmp_path / "sealed"
    tracemalloc.start()
    try:
        with open(sealed_path, "wb") as dst:
            written = OLD.seal_stream(Zeros(size), dst, context=CTX)
        _, seal_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        sink = Sink()
        with open(sealed_path, "rb") as src:
            opened = OLD.unseal_stream(src, sink, context=CTX)
        _, open_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert written == sealed_path.stat().st_size > size
    assert opened == sink.size == size
    report(f"50 MB stream, 1 MB chunks: peak Python memory {seal_peak / 2**20:.1f} MB sealing, "
           f"{open_peak / 2**20:.1f} MB opening")
    assert seal_peak < 8 << 20
    assert open_peak < 8 << 20


# --- keys from the environment


def test_keys_parse_first_is_current():
    ring = Keyring.from_config(f"{entry('k2', 2)}, {entry('k1', 1)}")
    assert ring.current_id == "k2" and ring.ids == ["k2", "k1"]
    assert ring.unseal(Keyring.from_config(entry("k1", 1)).seal(b"v", context=CTX), context=CTX) == b"v"


def test_without_keys_the_derived_key_is_used():
    ring = Keyring.from_config("", secret="s" * 50)
    assert ring.ids == ["dev"]
    assert ring.keys[0][1] == crypto.derive_key("s" * 50) != crypto.derive_key("t" * 50)
    # "dev" may follow a real key: the way out of the derived key
    both = Keyring.from_config(f"{entry('k1', 1)},dev", secret="s" * 50)
    assert both.ids == ["k1", "dev"]
    assert both.unseal(ring.seal(b"v", context=CTX), context=CTX) == b"v"


@pytest.mark.parametrize(
    "text,message",
    [
        ("k1", "expected id:base64-key"),
        ("k1:notbase64!!", "expected 32 bytes"),
        (f"k1:{base64.b64encode(b'short').decode()}", "expected 32 bytes"),
        (entry("bad id", 1), "a key id is"),
        (entry("dev", 1), "a key id is"),
        (f"{entry('k1', 1)},{entry('k1', 2)}", "appears twice"),
    ],
)
def test_malformed_keys_are_refused_without_showing_them(text, message):
    with pytest.raises(KeyConfigError, match=message) as caught:
        Keyring.from_config(text, secret="s" * 50)
    assert base64.b64encode(key(1)).decode() not in str(caught.value)


def test_the_module_functions_read_the_settings(settings):
    settings.GRADUAL_ENCRYPTION_KEYS = f"{entry('k2', 2)},{entry('k1', 1)}"
    assert crypto.current_key_id() == "k2"
    blob = crypto.seal(b"v", context=CTX)
    assert crypto.key_id_of(blob) == "k2"
    assert crypto.unseal(blob, context=CTX) == b"v"
    out = io.BytesIO()
    crypto.seal_stream(io.BytesIO(b"file"), out, context=CTX)
    back = io.BytesIO()
    assert crypto.unseal_stream(io.BytesIO(out.getvalue()), back, context=CTX) == 4 and back.getvalue() == b"file"
    settings.GRADUAL_ENCRYPTION_KEYS = ""
    assert crypto.current_key_id() == "dev" and crypto.uses_derived_key()
    with pytest.raises(CryptoError, match="'k2'"):
        crypto.unseal(blob, context=CTX)


def test_the_system_check_reports_malformed_keys(settings):
    settings.GRADUAL_ENCRYPTION_KEYS = "k1:nope"
    found = checks.run_checks(tags=[checks.Tags.security])
    assert [e.id for e in found if e.id.startswith("gradual.")] == ["gradual.E001"]
    assert "nope" not in found[0].msg
    settings.GRADUAL_ENCRYPTION_KEYS = entry("k1", 1)
    assert not [e for e in checks.run_checks(tags=[checks.Tags.security]) if e.id.startswith("gradual.")]


def test_the_deploy_check_warns_about_the_derived_key(settings):
    settings.GRADUAL_ENCRYPTION_KEYS = ""
    found = checks.run_checks(tags=[checks.Tags.security], include_deployment_checks=True)
    assert "gradual.W001" in [e.id for e in found]
    settings.GRADUAL_ENCRYPTION_KEYS = entry("k1", 1)
    found = checks.run_checks(tags=[checks.Tags.security], include_deployment_checks=True)
    assert "gradual.W001" not in [e.id for e in found]



@pytest.mark.parametrize("size", [0, 1, 63, 64, 65, 64 * 5, 64 * 5 + 17])
def test_a_sealed_stream_reads_at_random_as_its_plain_bytes(size):
    """``SealedReader``: any seek and read gives the plain bytes there, whatever the size (a full
    last chunk, an empty final chunk, a short one); a Parquet file sealed whole reads its row groups
    through it as from the plain file."""
    import random as _random

    from market.core.crypto import SealedReader

    ring = Keyring.from_config("", secret="reader")
    plain = os.urandom(size)
    sealed = io.BytesIO()
    ring.seal_stream(io.BytesIO(plain), sealed, context=b"ctx", chunk_size=64)
    blob = sealed.getvalue()
    reader = SealedReader(ring, lambda at, n: blob[at:at + n], len(blob), context=b"ctx", cached=2)
    assert reader.size == size and reader.read() == plain
    rng = _random.Random(size)
    for _ in range(50):
        at, n = rng.randrange(0, size + 3), rng.randrange(0, 200)
        reader.seek(at)
        assert reader.read(n) == plain[at:at + n]
    if size >= 5:
        reader.seek(-5, io.SEEK_END)
        assert reader.read() == plain[-5:]


def test_a_sealed_reader_refuses_a_tampered_cut_or_moved_stream():
    from market.core.crypto import SealedReader

    ring = Keyring.from_config("", secret="reader")
    sealed = io.BytesIO()
    ring.seal_stream(io.BytesIO(b"x" * 300), sealed, context=b"ctx", chunk_size=64)
    blob = sealed.getvalue()

    def opened(data, context=b"ctx"):
        reader = SealedReader(ring, lambda at, n: data[at:at + n], len(data), context=context)
        return reader.read()

    assert opened(blob) == b"x" * 300
    flipped = bytearray(blob)
    flipped[100] ^= 1
    for bad in (bytes(flipped), blob[:-80], blob[:-1], blob + b"\0" * 80):
        with pytest.raises(CryptoError):
            opened(bad)
    with pytest.raises(CryptoError):
        opened(blob, context=b"other")


def test_a_parquet_file_sealed_whole_reads_one_row_group_through_the_reader():
    import pyarrow as pa
    import pyarrow.parquet as pq

    from market.core.crypto import SealedReader

    table = pa.table({"a": list(range(200_000)), "b": [f"v{i % 7}" for i in range(200_000)]})
    plain = io.BytesIO()
    pq.write_table(table, plain, row_group_size=20_000)
    ring = Keyring.from_config("", secret="reader")
    sealed = io.BytesIO()
    ring.seal_stream(io.BytesIO(plain.getvalue()), sealed, context=b"t", chunk_size=4096)
    blob = sealed.getvalue()
    asked = []

    def read_at(at, n):
        asked.append(n)
        return blob[at:at + n]

    found = pq.ParquetFile(SealedReader(ring, read_at, len(blob), context=b"t"))
    assert found.num_row_groups == 10
    assert found.read_row_group(7).equals(table.slice(140_000, 20_000))
    assert sum(asked) < len(blob) / 3  # one row group and the footer (read 64 kB at a time): not the whole file
