from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("arena", "0018_eval_holds"),
    ]

    operations = [
        migrations.AddField(
            model_name="modelentry",
            name="takes_images",
            field=models.BooleanField(
                default=False,
                help_text="The model reads images; only models marked are drawn for an image "
                "battle (its backend must carry images).",
                verbose_name="reads images",
            ),
        ),
    ]
