from docindex.cli import main

main()
