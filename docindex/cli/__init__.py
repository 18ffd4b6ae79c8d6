"""The ``docindex`` command: the entry point and warm-server client (launcher), click commands
(main, nav, roots), rendering to the terminal or JSON (render, output, progress), help examples.
May import: anything below; nothing imports it (but ``python -m docindex``).
"""
