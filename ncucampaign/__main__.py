"""`python -m ncucampaign` is the same as the `ncucampaign` command."""

import sys

from ncucampaign.cli import main

sys.exit(main())
