"""``python -m convostore``: the ``convostore`` command (``pip install 'convostore[cli]'``)."""

from __future__ import annotations

import sys

NEEDS_EXTRA = 6
"""Exit status when the command's own dependencies are not installed."""


def main() -> None:
    """Run the command; without its extra's dependencies, say how to install them."""
    try:
        from .commands.cli import app
    except ImportError as exc:
        if exc.name not in ("click", "rich") and not str(exc).startswith(("click", "rich")):
            raise
        sys.stderr.write(
            f"convostore: the command line needs {exc.name or 'its dependencies'}:"
            " pip install 'convostore[cli]'\n"
        )
        sys.exit(NEEDS_EXTRA)
    app(prog_name="convostore")


if __name__ == "__main__":
    main()
