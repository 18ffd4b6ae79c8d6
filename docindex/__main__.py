from docindex.cli.launcher import main

main(prog_name="docindex")
