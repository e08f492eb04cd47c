"""How ops use the cores, with no op semantics: the block pool and its splitting rules
(``parallel``), the one owner of the BLAS thread count (``blas``), row-wise kernels that run
block by block on the pool (``rowwise``), and glibc's heap trimming (``heap``)."""
