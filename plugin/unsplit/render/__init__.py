"""Every text the plugin prints, made once so both debuggers and the CLI agree: frames, `where`
and blocks (`frames`), stop and step reports (`stop`), breakpoint messages (`breaks`)."""
