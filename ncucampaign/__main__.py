"""`python -m ncucampaign` is the same as the `ncucampaign` command."""

import sys

from ncucampaign._entry import main

sys.exit(main())
