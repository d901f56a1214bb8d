"""The authority itself: which server, migrations, the deployment pin, import runs."""
