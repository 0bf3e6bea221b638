import{a,b,c}from"./chunk-CWEYGEBE.js";import"./chunk-MK3IBSUY.js";export{b as Credentials,c as TestOutcome,a as providerWords};
