"""The ``profilerhub`` command line. See :mod:`profilerhub.cli.main`."""
