from holistic_app.cli import main

main()
