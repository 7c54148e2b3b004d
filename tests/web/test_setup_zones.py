"""The Setup page's time zone (web/setup.py): a list by region and city of
the zones the box can take, not free text, and the field shows the zone
stored -- the one root applied, else the one asked for and not applied yet
(a laptop has no root side to take it), else the computer's own."""

from __future__ import annotations

import json
import re

import pytest

from appliance import setup
from web_support import PIN

pytestmark = pytest.mark.skipif(not (setup.ZONEINFO / "Europe" / "Paris").exists(),
                                reason="no time-zone database (/usr/share/zoneinfo)")


def selected(html: str) -> list[str]:
    select = re.search(r'<select id="setup-timezone".*?</select>', html, re.S).group(0)
    return re.findall(r'<option value="([^"]+)" selected>', select)


def test_every_zone_listed_is_one_the_box_takes_and_paris_is_under_europe():
    from web.setup import REGIONS, time_zones

    groups = dict(time_zones())
    assert set(groups) <= set(REGIONS)
    assert ("Europe/Paris", "Paris") in groups["Europe"]
    assert ("America/Argentina/Buenos_Aires", "Buenos Aires (Argentina)") in groups["America"]
    cities = [city for _zone, city in groups["Europe"]]
    assert cities == sorted(cities, key=str.casefold)
    for zones in groups.values():
        for zone, _city in zones:
            assert setup.check_timezone(zone) == zone


def test_the_field_keeps_the_zone_stored(session, tmp_path):
    from web_support import make_app

    data = tmp_path / "fresh"
    data.mkdir()
    app = make_app(session, data_dir=str(data), root_requests=False)
    client = app.test_client()
    try:
        page = client.get("/setup?lang=fr").text
        assert "<select" in page and 'optgroup label="Europe"' in page and ">Paris</option>" in page
        r = client.post("/api/setup", json={"timezone": "Europe/Paris"}, headers={"X-Table-Pin": PIN})
        assert r.status_code == 200 and "timezone" in r.json["saved"] and r.json["timezone"] == "Europe/Paris"
        assert client.get("/api/setup").json["timezone"] == "Europe/Paris"
        assert selected(client.get("/setup").text) == ["Europe/Paris"], "the field shows what was stored"
        # Root applied another one since: that is the box's zone now.
        (data / setup.SYSTEM_STATUS).write_text(json.dumps({"timezone": "Asia/Tokyo"}))
        assert selected(client.get("/setup").text) == ["Asia/Tokyo"]
        # A zone the list does not hold is still shown, not lost.
        (data / setup.SYSTEM_STATUS).write_text(json.dumps({"timezone": "Etc/GMT-3"}))
        assert selected(client.get("/setup").text) == ["Etc/GMT-3"]
        r = client.post("/api/setup", json={"timezone": "Paris"}, headers={"X-Table-Pin": PIN})
        assert r.status_code == 400                      # a city alone is no zone: the list gives the zone
    finally:
        app.extensions["companion"].close()
