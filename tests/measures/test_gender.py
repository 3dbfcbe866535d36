from measures import gender


def test_slots_then_coders_then_pronouns():
    assert gender.resolve({"name": "Kelly", "age": "20"})[:2] == ("F", "slots")
    assert gender.resolve({"gender": "man"})[:2] == ("M", "slots")
    assert gender.resolve({"subject": "Die Frau"})[:2] == ("F", "slots")
    assert gender.resolve({"name": "Alex"}, names={"Alex": "M"})[:2] == ("M", "slots")
    assert gender.resolve({"topic": "work"}, ["F", "F", "unclear"])[:2] == ("F", "coders")
    g, source, detail = gender.resolve({}, ["F", "M"], "He said he would bring his tools.")
    assert (g, source) == ("M", "pronouns") and detail["male_pronouns"] == 3
    g, source, detail = gender.resolve({}, [], "She met him; he helped her.")
    assert (g, source) == ("", "none") and "both genders" in detail["pronouns"]["reason"]
    assert gender.from_pronouns("Er sagte, dass er sein Buch vergessen hat.", "de")[0] == "M"
