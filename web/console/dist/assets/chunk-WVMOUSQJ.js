import{a,b,c}from"./chunk-5LEWVMAX.js";import"./chunk-BOR65X7B.js";import"./chunk-ZHN6E4VE.js";export{b as Credentials,c as TestOutcome,a as providerWords};
