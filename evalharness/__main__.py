from evalharness.cli import main

raise SystemExit(main())
