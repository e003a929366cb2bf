from chbench.cli import main

raise SystemExit(main())
