"""`python -m transformer COMMAND`: the command line (transformer/cli/, one module per command)."""
import sys

from .cli import main

sys.exit(main())
