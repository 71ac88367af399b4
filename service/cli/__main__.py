"""``python -m service.cli``: the ``cranfield`` command."""

from service.cli import main

raise SystemExit(main())
