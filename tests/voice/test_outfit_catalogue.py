"""The outfit catalogue: the built-in wardrobe's two outfits from the design and their Chinese names, and an
outfit's Chinese label in any atlas (the user's own too) as a name she answers to."""

from __future__ import annotations

from dataclasses import replace

from atlas.manifest import DEFAULT_DIR, Manifest
from sidecar.intents import Intents, Wear
from sidecar.outfit_catalogue import catalogue_of, load_catalogue


def test_hanfu_and_cyberpunk_are_in_the_built_in_catalogue_with_their_names_and_occasions() -> None:
    outfits = {o.id: o for o in load_catalogue()}
    assert outfits["hanfu"].name == "Hanfu robe" and outfits["hanfu"].chinese[:2] == ("古风汉服", "汉服")
    assert outfits["cyberpunk"].name == "Cyberpunk jacket" and outfits["cyberpunk"].chinese[0] == "赛博朋克"
    assert {"festival", "tea"} <= set(outfits["hanfu"].occasions)
    assert {"city", "neon", "game"} <= set(outfits["cyberpunk"].occasions)
    for outfit in outfits.values():  # every built-in outfit: its atlas label first, no name twice
        assert outfit.chinese and len(set(outfit.chinese)) == len(outfit.chinese), outfit.id


def test_an_outfits_chinese_label_in_any_atlas_is_a_name_she_answers_to() -> None:
    built_in = Manifest.load(DEFAULT_DIR)
    hat = replace(built_in.outfits[0], id="red_hat", name="Red hat", names={"zh": "红帽子"})
    intents = Intents(catalogue_of(replace(built_in, outfits=(*built_in.outfits, hat))), "Stella")
    assert intents.parse("换上红帽子") == Wear("red_hat")
    assert intents.parse("换上汉服") == Wear("hanfu") and intents.parse("穿上赛博朋克") == Wear("cyberpunk")
    assert intents.parse("Dress up for the lantern festival.") == Wear("hanfu")
    assert intents.parse("Could you dress up for the game?") == Wear("cyberpunk")
