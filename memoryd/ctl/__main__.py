import sys

from memoryd.ctl import main

sys.exit(main())
