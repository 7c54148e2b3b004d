"""companion/i18n.py keeps compiled catalogues in the user's cache."""

from __future__ import annotations

import pytest

from companion import i18n


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.delenv("CACHE_DIRECTORY", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    i18n.translations.cache_clear()
    yield tmp_path / "companion"
    i18n.translations.cache_clear()      # the next test compiles (or reads) its own


def _source():
    return (i18n.LOCALE_DIR / "fr" / "LC_MESSAGES" / "companion.po").read_bytes()


def test_the_cached_catalogue_is_the_compiled_one(cache, monkeypatch):
    first = i18n.translations("fr")
    files = list(cache.glob("*.mo"))
    assert len(files) == 1 and not list(cache.glob("*.part"))
    i18n.translations.cache_clear()

    def no_babel(*args):
        raise AssertionError("compiled again instead of read from the cache")
    monkeypatch.setattr(i18n, "_compile", no_babel)
    again = i18n.translations("fr")
    assert again._catalog == first._catalog and len(first._catalog) > 100
    assert again.gettext("Starting…") == "Démarrage…"


def test_a_changed_catalogue_is_compiled_again(cache, monkeypatch):
    i18n.translations("fr")
    source = _source() + b'\nmsgid "Only in this test"\nmsgstr "Seulement dans ce test"\n'
    monkeypatch.setattr(i18n.Path, "read_bytes", lambda self: source if self.suffix == ".po"
                        else self.open("rb").read())
    i18n.translations.cache_clear()
    assert i18n.translations("fr").gettext("Only in this test") == "Seulement dans ce test"
    assert len(list(cache.glob("*.mo"))) == 2


def test_a_torn_cache_file_is_compiled_again(cache):
    i18n.translations("fr")
    (cached,) = cache.glob("*.mo")
    cached.write_bytes(b"\x00" * 10)
    i18n.translations.cache_clear()
    assert i18n.translations("fr").gettext("Starting…") == "Démarrage…"
    assert cached.read_bytes()[:4] == b"\xde\x12\x04\x95", "rewritten whole"


def test_a_cache_that_cannot_be_written_costs_only_time(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.delenv("CACHE_DIRECTORY", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    i18n.translations.cache_clear()
    try:
        assert i18n.translations("fr").gettext("Starting…") == "Démarrage…"
    finally:
        i18n.translations.cache_clear()


def test_systemds_cache_directory_comes_first(tmp_path, monkeypatch):
    monkeypatch.setenv("CACHE_DIRECTORY", str(tmp_path / "svc"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert i18n.cache_dir() == tmp_path / "svc"
    monkeypatch.delenv("CACHE_DIRECTORY")
    assert i18n.cache_dir() == tmp_path / "xdg" / "companion"
