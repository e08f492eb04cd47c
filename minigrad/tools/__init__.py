"""Tools over recorded computations: finite-difference checks of VJPs (``gradcheck``) and
what a graph saved (``summary``)."""
