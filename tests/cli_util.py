"""Running the command line inside the test process: one helper for every test folder."""
from __future__ import annotations


def run_cli(args, capsys) -> tuple[int, str, str]:
    """``vit.cli.main(args)`` -> (status, stdout, stderr); argparse's SystemExit is a status."""
    from vit.cli.main import main
    try:
        status = main([str(a) for a in args])
    except SystemExit as e:
        status = e.code
    out, err = capsys.readouterr()
    return status, out, err
