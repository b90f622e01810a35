"""``scripts/install_pgvector.sh``: idempotent, and its apt source comes from the machine's.

The source stanza is checked with ``--print-source`` against apt configurations written
here (the variables ``APT_SOURCES_DIR`` and ``OS_RELEASE`` point the script at them);
the install itself is run against the local PostgreSQL, where pgvector is present, so it
must change nothing and succeed twice.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from textwrap import dedent

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "install_pgvector.sh"
MIRROR = "http://mirror.example.org/debian"


def _print_source(
    tmp_path: Path, files: dict[str, str], codename: str = "bookworm", **env: str
) -> subprocess.CompletedProcess[str]:
    apt = tmp_path / "apt"
    (apt / "sources.list.d").mkdir(parents=True)
    for name, text in files.items():
        (apt / name).write_text(dedent(text))
    os_release = tmp_path / "os-release"
    os_release.write_text(f'ID=debian\nVERSION_CODENAME="{codename}"\n')
    return subprocess.run(
        ["bash", str(SCRIPT), "--print-source"],
        env={"PATH": "/usr/bin:/bin", "APT_SOURCES_DIR": str(apt), "OS_RELEASE": str(os_release)}
        | env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_deb822_sources_give_the_release_mirror_and_its_keyring(tmp_path: Path) -> None:
    out = _print_source(
        tmp_path,
        {
            "sources.list.d/debian.sources": """\
                Types: deb
                URIs: http://security.example.org/debian-security
                Suites: bookworm-security
                Components: main
                Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

                Types: deb
                URIs: http://disabled.example.org/debian
                Suites: bookworm
                Components: main
                Enabled: no

                # the release itself
                Types: deb deb-src
                URIs: http://mirror.example.org/debian http://second.example.org/debian
                Suites: bookworm bookworm-updates
                Components: main contrib
                Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
                """,
            "sources.list.d/00-off.sources.disabled": "Types: deb\nURIs: http://x.example.org\n"
            "Suites: bookworm\nComponents: main\n",
        },
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == (
        f"Types: deb-src\nURIs: {MIRROR}\nSuites: trixie\nComponents: main\n"
        "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
    )


def test_one_line_sources_with_options(tmp_path: Path) -> None:
    out = _print_source(
        tmp_path,
        {
            "sources.list": """\
                # deb http://commented.example.org/debian bookworm main
                deb-src http://src.example.org/debian bookworm main
                deb [arch=amd64 signed-by=/etc/apt/keyrings/mirror.gpg] http://mirror.example.org/debian bookworm main
                deb http://late.example.org/debian bookworm main
                """,
        },
    )
    assert out.returncode == 0, out.stderr
    assert f"URIs: {MIRROR}\n" in out.stdout
    assert out.stdout.endswith("Signed-By: /etc/apt/keyrings/mirror.gpg\n")


def test_sources_list_is_read_before_the_directory_and_a_plain_entry_has_no_keyring(
    tmp_path: Path,
) -> None:
    out = _print_source(
        tmp_path,
        {
            "sources.list": f"deb {MIRROR} bookworm main\n",
            "sources.list.d/a.list": "deb http://other.example.org/debian bookworm main\n",
        },
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"Types: deb-src\nURIs: {MIRROR}\nSuites: trixie\nComponents: main\n"


def test_an_inline_key_is_copied_whole(tmp_path: Path) -> None:
    out = _print_source(
        tmp_path,
        {
            "sources.list.d/mirror.sources": """\
                Types: deb
                URIs: http://mirror.example.org/debian
                Suites: bookworm
                Components: main
                Signed-By:
                 -----BEGIN PGP PUBLIC KEY BLOCK-----
                 .
                 mQINBGPL0BUBEADmW5NdOOHwPIJlgPu6JDcKw/NZJPR8lsD3K87ZM18gzyQZJD+w
                 -----END PGP PUBLIC KEY BLOCK-----
                """,
        },
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.endswith(
        "Signed-By: \n -----BEGIN PGP PUBLIC KEY BLOCK-----\n .\n"
        " mQINBGPL0BUBEADmW5NdOOHwPIJlgPu6JDcKw/NZJPR8lsD3K87ZM18gzyQZJD+w\n"
        " -----END PGP PUBLIC KEY BLOCK-----\n"
    )


def test_no_source_for_the_release_is_an_error_naming_the_override(tmp_path: Path) -> None:
    files = {
        "sources.list.d/x.sources": "Types: deb\nURIs: http://x.example.org\nSuites: nodistro\n"
    }
    out = _print_source(tmp_path, files)
    assert out.returncode != 0
    assert out.stdout == ""
    assert "no enabled apt source for 'bookworm'" in out.stderr
    assert "PGVECTOR_SOURCE_URI" in out.stderr
    chosen = _print_source(
        tmp_path / "again", files, PGVECTOR_SOURCE_URI=MIRROR, PGVECTOR_SOURCE_SUITE="sid"
    )
    assert chosen.returncode == 0, chosen.stderr
    assert chosen.stdout == f"Types: deb-src\nURIs: {MIRROR}\nSuites: sid\nComponents: main\n"


def test_this_machines_sources() -> None:
    out = subprocess.run(
        ["bash", str(SCRIPT), "--print-source"], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    uri = out.stdout.splitlines()[1].removeprefix("URIs: ")
    configured = [Path("/etc/apt/sources.list"), *Path("/etc/apt/sources.list.d").glob("*")]
    assert any(p.is_file() and uri in p.read_text() for p in configured)


def test_the_script_names_no_mirror() -> None:
    text = SCRIPT.read_text()
    assert "://" not in text.replace("postgresql://", "")


@pytest.mark.postgres
def test_install_is_idempotent(postgres_schemas: object) -> None:
    url = postgres_schemas()  # type: ignore[operator]
    for _ in range(2):
        out = subprocess.run(
            ["bash", str(SCRIPT), url], capture_output=True, text=True, check=False, timeout=120
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith("pgvector: ")
        assert " ready in " in out.stdout
        assert out.stderr == ""  # nothing to install, nothing to report
