from gate.cli.start import main

main()
