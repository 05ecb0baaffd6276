from msdoctor.cli import main

raise SystemExit(main())
