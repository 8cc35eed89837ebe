"""``python -m course_utils.toolkit.watch script.py [args...]``."""

import sys

from course_utils.toolkit.watch.command import main

sys.exit(main())
