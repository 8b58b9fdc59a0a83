"""One module per chapter of the book: the chapter's logic, tested; its notebook only calls it.

``chNN_<name>.run(...)`` style functions take the notebook's parameters and return tables
(tidy DataFrames), figures (matplotlib) and generated sentences; :mod:`.common` holds what
every chapter shares (result directory, table writer, parameters table, display options).
"""
