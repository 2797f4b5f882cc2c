"""The store in one room: the SQLite database the recorder writes and the CLI reads.

Its layout and digest key, the rows and bodies a run is written as, the writer and its
process, the reader, what a diff holds and which runs are kept all live here; standard
library and ``diffgenome.protocol`` only, so the recording side imports it inside the user's
test process."""
