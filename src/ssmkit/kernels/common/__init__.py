"""Pieces shared by the kernel families: the host-mapped address table of graph-backed calls (``mapped_io``)."""
