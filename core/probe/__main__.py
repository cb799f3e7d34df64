"""python -m core.probe: measure this machine's roofs (see core.probe.cli)."""

from core.probe.cli import main

raise SystemExit(main())
