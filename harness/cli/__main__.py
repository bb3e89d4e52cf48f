"""``python -m harness.cli``: the ``ctxbench`` command without its console script."""

import sys

from harness.cli import main

sys.exit(main())
