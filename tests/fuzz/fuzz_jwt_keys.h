/* fuzz_jwt_keys.h — written by tests/fuzz/gen_jwt_corpus.mjs with the seed corpora: the key set
 * the seeds of fuzz_jwt are signed for, and tokens of each alg that fuzz_jwks verifies against
 * the sets it makes. Test keys, made for this and thrown away. */
#ifndef HM_FUZZ_JWT_KEYS_H
#define HM_FUZZ_JWT_KEYS_H

#define FUZZ_JWT_NOW 1800000000
#define FUZZ_JWT_ISS "https://idp.example"
#define FUZZ_JWT_AUD "hermes"
#define FUZZ_JWKS "{\"keys\":[{\"kty\":\"RSA\",\"n\":\"wDj0cg-ag_zecQUeyZ9jJP4Omqfd5x93gG1HbCg6PiqrTj372ADT1yTXsSHahnCPk0JYUXiCbiqHfznlkGn1l_q5rSeWCCV795WpfsMWwq0d538NwHGi2LLN3BZdgUCPsY5iHlCQHgXgJo_XUqs5aohgEgikC5PvlNrpCws8n75HSeUMlJGmDwa2aHWHTMBIyOePdj4LTWtSBY9iPI9jgDQa78nYqDBYJhr8gnnWdabqxmO2mwh0DWc57XaECieivQKr_JO-LgP4wGVXQiXBg3YYaSib6LGPjlLSmK6r6_qQyWi-peUqQNTRyj8Zjf3FjOHdWNSHnnUhMyECZInyMw\",\"e\":\"AQAB\",\"kid\":\"r1\",\"use\":\"sig\"},{\"kty\":\"EC\",\"x\":\"BUyJzvNd2bEhEpsAyfX92ovURkg6aHLjGXw7nd5qPdY\",\"y\":\"2GF3yz-PcTxjBBu_HRiJiYCOOOBtdstl6kkboMT0gOQ\",\"crv\":\"P-256\",\"kid\":\"e1\"},{\"crv\":\"Ed25519\",\"x\":\"2lbQe2Q0B1MGQYIvPtSym_-S7sI0zpPL92_tkh4ORBE\",\"kty\":\"OKP\",\"kid\":\"d1\",\"alg\":\"EdDSA\"}]}"

static const char *const fuzz_jwt_tokens[] = {
    "eyJhbGciOiJSUzI1NiIsImtpZCI6InIxIiwidHlwIjoiYXQrand0In0.eyJpc3MiOiJodHRwczovL2lkcC5leGFtcGxlIiwiYXVkIjoiaGVybWVzIiwic3ViIjoiYWxpY2UiLCJleHAiOjE4MDAwMDA2MDAsImlhdCI6MTc5OTk5OTk5NSwibmJmIjoxNzk5OTk5OTk1fQ.b8ndWzRLp5zg40cp1yHtnCRRGGN_pZz5rsyHpUitG_rVf9xzrWk1KMQ6OaUjbvxCaopt2osWX7G0WQ8TahceOOqQeIl2odSjFqqg904GWq5HyT-xBfqpC7mKVUGg63vhbOnXBuOQ3c-RQJAoWYKoGZAWc_3iruqS8VwPInsslT-6jYUktjlH_PsZtgV4T-zRKmDw6RY_umRwdrznHhFulp_feid-5lw39iB61048cSVyEkqgA8GIApbuzRMOR1qRn-I4h3bFtc9CYucBSVTr1XHbhpxWta43N8ztlO9hwgCbe7M-3iCRFqRIvZRYDjWsofAvKHXlX1hNrGlEl4va_g",
    "eyJhbGciOiJQUzI1NiIsImtpZCI6InIxIn0.eyJpc3MiOiJodHRwczovL2lkcC5leGFtcGxlIiwiYXVkIjoiaGVybWVzIiwic3ViIjoiYWxpY2UiLCJleHAiOjE4MDAwMDA2MDAsImlhdCI6MTc5OTk5OTk5NSwibmJmIjoxNzk5OTk5OTk1fQ.rpkHhwNnYrKpK35SFVi902bkX_dzqyOsXUz-uAoxPR8RI53uqKoL--HK7533f3dlOr9w2Pr13lbITCu-y7Ij13hiI6yC54tGOKGNmn7rv-i9RazZsOuHX3gZELImkofXQOALT7CWsUGuwsCzIa1ZEzyEVNItQTm8rHQRYUBhXA5V-Ma2BRrIqrPKi5Q84W7yu7RFVvgmbA5_fNidPqVZH0_VLCZkj-qbnIXb-ZFFu7_NvpMx_vC30rX1NJmexLZx1I3eApLzzMukk7CsVIh6svTB8saoSRu_l8KA8SCf0Pyhwf63oZtvayxkCFCdRKAqUQXypDypgF2bOctDpo9Xmw",
    "eyJhbGciOiJFUzI1NiIsImtpZCI6ImUxIn0.eyJpc3MiOiJodHRwczovL2lkcC5leGFtcGxlIiwiYXVkIjoiaGVybWVzIiwic3ViIjoiYWxpY2UiLCJleHAiOjE4MDAwMDA2MDAsImlhdCI6MTc5OTk5OTk5NSwibmJmIjoxNzk5OTk5OTk1fQ.zZKSmDKk49UagfmDZ-RCynz0p5pMYUSaVqtTq2f6jEeHllvIptbivr473Iv_OorxUx7-eTjxLP8XJh_oUxYCfQ",
    "eyJhbGciOiJFZERTQSIsImtpZCI6ImQxIn0.eyJpc3MiOiJodHRwczovL2lkcC5leGFtcGxlIiwiYXVkIjoiaGVybWVzIiwic3ViIjoiYWxpY2UiLCJleHAiOjE4MDAwMDA2MDAsImlhdCI6MTc5OTk5OTk5NSwibmJmIjoxNzk5OTk5OTk1fQ.RR3rAyv17h1K5Bdb7cQc4ORwPq9KNHndjtd4LDo80xgPKG9IcXOWZDiwg-XmJKfrwlbFre_SEzZBA-sB15V7Bg",
    "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJodHRwczovL2lkcC5leGFtcGxlIiwiYXVkIjoiaGVybWVzIiwic3ViIjoiYWxpY2UiLCJleHAiOjE4MDAwMDA2MDAsImlhdCI6MTc5OTk5OTk5NSwibmJmIjoxNzk5OTk5OTk1fQ.ozn_H-yDyTKj6Gk69nKr0L4PQB-3T5V1ttcjnaa53_-8BvD_c7qInRaOD34B3nlyqQaoE3CUMx_bxoyZcrJ4swgDFJHHXVu42Ls3pkUNxvlgfOkMs0CCWIlgYj-6Mf4cqA_LM-nTgA2Q7w4OacSL8sM4FBA0yhM9RpsBWJc82fQJ0Kb_5ltYlGPmMwpw1r_8Xafj8zzhMEjG3xOtuhrwABVwp-taJG0tic15_cPBn9ox-TwUdWaE1caxBK7R4Ezow0kZsTAuoQY0VqvDlIZJYZtFHYZRgiPou3L8gpd4_qOKbKZEHJqNIN1efq-ekA7_uPLJLHTfLCsUIN4mDruA8A",
};

#endif
