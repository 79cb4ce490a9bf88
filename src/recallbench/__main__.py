from recallbench.cli import main

main()
