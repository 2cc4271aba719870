"""`ncucampaign` with the toy batch system in its table: the one line a new system adds to backends/systems.py,
made here before the command line is built."""

from __future__ import annotations

import sys

from ncucampaign.backends import systems
from tests.backends.toy.system import TOY

systems.BATCH[TOY.name] = TOY
systems.BACKENDS[TOY.name] = TOY

if __name__ == "__main__":
    from ncucampaign.cli import main

    sys.exit(main())
