"""`python -m everynode`: the same command line as the `everynode` script."""

from everynode.product.cli import main

if __name__ == "__main__":
    main()
