//! Tests of `lore_toolserver::lists`, each caller's lists.

use engine::appdb::Principal;
use engine::resources::Caller;
use engine::settings::Secret;
use lore_toolserver::lists::holder;

#[test]
fn callers_are_held_apart_by_user_sign_in_and_key() {
    let ann = Some(Principal::Admin { account_id: "ann".into() });
    let bob = Some(Principal::Admin { account_id: "bob".into() });
    let keyed = |raw: &str| Caller { principal: ann.clone(), key: Some(Secret::new(raw)), oauth: false };
    let all = [
        holder(&Caller { principal: ann.clone(), ..Caller::default() }),
        holder(&Caller { principal: bob, ..Caller::default() }),
        holder(&Caller { principal: ann.clone(), oauth: true, ..Caller::default() }),
        holder(&keyed("lore_sk_one")),
        holder(&keyed("lore_sk_two")),
    ];
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            assert_ne!(a, b);
        }
    }
    assert!(!all[3].contains("lore_sk_one"), "the key itself is never kept");
    assert_eq!(holder(&keyed("lore_sk_one")), all[3]);
}
