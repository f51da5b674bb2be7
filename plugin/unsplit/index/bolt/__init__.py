"""BOLT's outputs: BAT's translation to input functions, the pre-BOLT input binary, and where its
code went. Imports only model/ (and names/)."""
