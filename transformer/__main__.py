"""`python -m transformer train | eval | decode`: see transformer/cli.py."""
import sys

from .cli import main

sys.exit(main())
