"""`python -m ncucampaign` is the same as the `ncucampaign` command."""

import sys

try:
    from ncucampaign.cli import main
except KeyboardInterrupt:  # Ctrl-C while Python is still starting: no traceback
    sys.exit(130)

sys.exit(main())
