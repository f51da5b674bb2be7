"""What the index keeps to answer again quickly: the persistent store of module indexes (by
build-id, on disk) and a session's locations by pc. Imports model/ and sources/."""
