from gate.cli.app import main

main()
