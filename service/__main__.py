from service.cli import main

main()
