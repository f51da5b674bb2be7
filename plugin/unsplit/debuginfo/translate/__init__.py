"""The pre-BOLT input's DWARF moved through BAT into a BOLTed module's debug file (`build`):
units patched in place (`units`, `kinds`), lists (`lists`), line tables (`lines`) and address
tables (`addr`) written again."""
