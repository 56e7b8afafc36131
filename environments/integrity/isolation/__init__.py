"""The isolated judge: tests in a pristine interpreter, the solution's code in a separate, confined
process reached only through a data-only boundary. Standard library only: the package is copied into
the verifier's sandbox and runs on the task's interpreter."""
