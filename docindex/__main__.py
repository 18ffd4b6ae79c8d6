from docindex.launcher import main

main(prog_name="docindex")
