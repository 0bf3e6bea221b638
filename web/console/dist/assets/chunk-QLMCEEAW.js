import{a,b,c}from"./chunk-HE6JYSSR.js";import"./chunk-AXPV6DMB.js";import"./chunk-BB3NY6VR.js";export{b as Credentials,c as TestOutcome,a as providerWords};
