"""`python -m kdiff`: the command line."""
import sys

from kdiff.commands.cli import main

sys.exit(main())
