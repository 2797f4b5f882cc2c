"""The store: one SQLite database and its digest key, written by the recorder and by
``combine``, read by the analysis side. Its layout, the writer, the reader and what keeps
it small all live here; standard library and ``diffgenome.protocol`` only, so the recording
side can import it inside the user's test process."""
