"""``python -m vit COMMAND``: see ``vit/cli/main.py`` (``python -m vit --help``)."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
