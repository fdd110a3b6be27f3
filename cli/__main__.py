from stickyd.cli.main import main

main()
