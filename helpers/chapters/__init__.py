"""One module per chapter of the book: the chapter's logic, tested; its notebook only calls it.

Every function a notebook displays returns a :class:`.common.Section` (Markdown generated from
the numbers, named tables and figures, the key metric call, the facts the prose states, the data
later sections need); functions that only measure return their data. :mod:`.common` holds what
every chapter shares (the Section, result directory, table writer, parameters, the shared safety
settings); :mod:`.template` is the chapter a new one starts from (docs/NEW_CHAPTER.md).
"""
