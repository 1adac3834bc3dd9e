"""``python -m aotc``: the same as the ``aotc`` command."""

from aotc.cli import main

main()
