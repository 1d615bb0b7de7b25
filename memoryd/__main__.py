try:
    from memoryd.cli import main
except KeyboardInterrupt:  # Ctrl-C within the first tenth of a second: no traceback
    raise SystemExit(130) from None

raise SystemExit(main())
