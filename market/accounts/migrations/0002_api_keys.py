"""API keys replace DRF's authtoken tokens (stored in clear, never expiring, not revocable).

The old ``authtoken_token`` table is dropped where it exists: its tokens no longer sign anyone
in (the app is gone), and a table of live-looking secrets in clear should not linger.
"""

import django.db.models.deletion
import django.utils.timezone
import market.accounts.keys
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0001_initial'),
    ]

    operations = [
        migrations.CreateModel(
            name='ApiKey',
            fields=[
                ('id', models.CharField(default=market.accounts.keys.new_id, editable=False, max_length=32, primary_key=True, serialize=False)),
                ('name', models.CharField(max_length=100)),
                ('prefix', models.CharField(help_text='The first characters of the secret, to tell keys apart.', max_length=16)),
                ('secret_hash', models.CharField(editable=False, max_length=64, unique=True)),
                ('from_sign_in', models.BooleanField(default=False, help_text='Made by a username/password exchange.')),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('last_used_at', models.DateTimeField(blank=True, null=True)),
                ('expires_at', models.DateTimeField(blank=True, null=True)),
                ('revoked_at', models.DateTimeField(blank=True, null=True)),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='api_keys', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['-created_at', 'id'],
                'indexes': [models.Index(fields=['user', '-created_at'], name='apikey_user_created')],
            },
        ),
        migrations.RunSQL("DROP TABLE IF EXISTS authtoken_token", reverse_sql=migrations.RunSQL.noop),
    ]
