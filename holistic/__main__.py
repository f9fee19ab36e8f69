from holistic.cli import main

main()
